"""poolgpu.torch's functions as PyTorch custom operators, ``torch.ops.poolgpu.<name>``, so
that PyTorch's graph tools see each call as one operator: ``torch.compile`` (no graph
break), ``torch.export`` (one node), ``torch.jit.trace`` (computed on new inputs), meta and
fake tensors (shapes only), autograd, ``torch.func.grad`` and ``vmap``.

Each family (``max_pool``, ``avg_pool``, ...) registers, from one plan function:

- ``<family>1d``, ``2d``, ``3d`` (and ``_with_indices`` forms returning indices too, as ATen's
  ``max_pool2d_with_indices``), taking the public function's arguments as checked
  canonical values (int lists, bools, floats) and ``device_key``;
- their fake implementation: the same plan's output shapes, types, device and memory
  format, without values;
- ``<family>_backward(grad_output, <the forward's arguments>)``, the autograd formula's
  one operator, and its fake implementation;
- a vmap rule: the vmapped dimension folds into the batch dimension.

A custom operator cannot take a Python object, so ``device=`` travels as ``device_key``: the
number of the pg.Device in a table of this module (None: ``pg.default_device()``).  A device
given to a poolgpu.torch function stays in that table for the life of the process, as a
compiled or exported graph names it by that number.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, NamedTuple, Optional

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from ..device import Device
from ..errors import ValidationError
from ._call import Plan, checked_device

LIBRARY = torch.library.Library("poolgpu", "DEF")

_DEVICES: Dict[int, Device] = {}  # device_key -> Device
_KEYS: Dict[int, int] = {}  # id(Device) -> device_key (the Device is kept alive by _DEVICES)


# torch.compile runs this when tracing, not in the graph: the table is filled before the graph
# names the number (traced, the filling would be replayed only after the graph ran)
@torch.compiler.assume_constant_result
def device_key(device: Any, function: str) -> Optional[int]:
    """``device=`` (None or a pg.Device, checked) as the number the operators take."""
    device = checked_device(device, function)
    if device is None:
        return None
    key = _KEYS.get(id(device))
    if key is None:
        key = _KEYS[id(device)] = len(_DEVICES)
        _DEVICES[key] = device
    return key


def device_of(key: Optional[int], function: str) -> Optional[Device]:
    """The pg.Device of a ``device_key`` (None: the default device)."""
    if key is None:
        return None
    if key not in _DEVICES:  # e.g. a graph exported by another process
        raise ValidationError("device", f"{function}: this call names poolgpu device {key}, which this process has "
                                        f"not been given; pass device= again (or None for pg.default_device())")
    return _DEVICES[key]


class Operator(NamedTuple):
    """A public function's operator: the function's name (for messages), its plan, and the
    torch function an ONNX export records in its place (the operator's arguments but
    ``device_key``)."""

    function: str
    plan: Callable[..., Plan]
    exported: Callable


OPERATORS: Dict[str, Operator] = {}  # name -> what serves the public functions
_OVERLOADS: Dict[str, Any] = {}  # name -> torch.ops.poolgpu.<name>.default
_UNDER_TRANSFORMS: Dict[str, type] = {}  # name -> its autograd.Function (see call)


def call(name: str, *args):
    """``torch.ops.poolgpu.<name>(*args)``.

    Under torch.func's transforms the call goes through an autograd.Function with the same
    formula: the autograd kernel that ``torch.library.register_autograd`` makes has no
    ``setup_context``, which ``torch.func.grad`` requires (torch 2.13 and 2.14)."""
    if torch._C._are_functorch_transforms_active():
        return _UNDER_TRANSFORMS[name].apply(*args)
    return _OVERLOADS[name](*args)


def dispatch(name: str, input, *arguments, device: Any):
    """A public function's call of operator ``name``: through the operator for a torch input,
    the plan directly for a NumPy array or a pg.Tensor.

    Under ``torch.onnx.export`` (either exporter) a torch input goes to the torch function of
    the same results instead, which the exporters write as ONNX's pooling nodes: the exported
    model runs without poolgpu, as the model before ``convert`` would export."""
    op = OPERATORS[name]
    if isinstance(input, torch.Tensor):
        if torch.onnx.is_in_onnx_export():
            return op.exported(input, *arguments)
        if not _seen_by_torch(input, arguments):
            return _one(op.plan(op.function, input, *arguments, device=device).run())
        return call(name, input, *arguments, device_key(device, op.function))
    return _one(op.plan(op.function, input, *arguments, device=device).run())


def _seen_by_torch(input: torch.Tensor, arguments: tuple) -> bool:
    """Whether a call on torch tensors must go through its custom operator: where autograd
    records it (a tensor requiring a gradient, with gradients enabled), a tracer or compiler
    follows it (jit.trace, torch.compile and export), a transform, a mode or a tensor
    subclass (fake and meta tensors included) may handle it.  Otherwise the plan runs at
    once, with the same results: torch's dispatcher would only add its time (100-400
    microseconds a call on a CPU adapter's host)."""
    tensors = [input] + [a for a in arguments if isinstance(a, torch.Tensor)]
    return (any(type(t) is not torch.Tensor or t.is_meta for t in tensors)
            or (torch.is_grad_enabled() and any(t.requires_grad for t in tensors))
            or torch._C._get_tracing_state() is not None
            or torch.compiler.is_compiling()
            or torch._C._are_functorch_transforms_active()
            or torch._C._len_torch_function_stack() > 0
            or _get_current_dispatch_mode() is not None)


def torch_function(form: str, **fixed) -> Callable:
    """``torch.nn.functional.<form>`` given ``fixed`` (e.g. ``return_indices``): an operator's
    ``exported`` where it takes the operator's arguments as they are."""
    function = getattr(torch.nn.functional, form)
    return lambda *arguments: function(*arguments, **fixed)


def _one(results: tuple):
    return results[0] if len(results) == 1 else results


def _define(name: str, function: Callable[[tuple], str], schema: str, plan: Callable[..., Plan],
            setup_context: Callable, backward: Callable) -> None:
    """``torch.ops.poolgpu.<name>`` computing ``plan(function, *arguments, device=)``, where
    ``schema``'s last argument is ``device_key``, differentiated by ``backward``."""
    LIBRARY.define(name + schema)

    def real(*args):
        *arguments, key = args
        f = function(arguments)
        return _one(plan(f, *arguments, device=device_of(key, f)).run())

    def fake(*args):
        return _one(plan(function(args[:-1]), *args[:-1], device=None).fake())

    LIBRARY.impl(name, real, "CompositeExplicitAutograd")
    torch.library.register_fake(f"poolgpu::{name}", fake, lib=LIBRARY)
    overload = _OVERLOADS[name] = getattr(torch.ops.poolgpu, name).default
    torch.library.register_vmap(f"poolgpu::{name}", _fold(overload), lib=LIBRARY)
    torch.library.register_autograd(f"poolgpu::{name}", backward, setup_context=setup_context, lib=LIBRARY)
    _UNDER_TRANSFORMS[name] = type(f"{name}_function", (torch.autograd.Function,), {
        "forward": staticmethod(_calling(overload)), "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward), "generate_vmap_rule": True})


_SAVED = object()  # in ctx.arguments: a tensor argument, kept by save_for_backward


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(*(i for i in inputs if isinstance(i, torch.Tensor)))
    ctx.arguments = tuple(_SAVED if isinstance(i, torch.Tensor) else i for i in inputs)


def _formula(backward_name: str) -> Callable:
    """The backward of an operator: ``<backward_name>(grad_output, <its arguments>)`` for
    the input (the first argument); no gradient for the others (indices, boxes)."""

    def backward(ctx, grad_output, *_):
        saved = iter(ctx.saved_tensors)
        arguments = [next(saved) if a is _SAVED else a for a in ctx.arguments]
        dx = call(backward_name, grad_output, *arguments) if ctx.needs_input_grad[0] else None
        return (dx,) + (None,) * (len(arguments) - 1)

    return backward


def _nothing_saved(ctx, inputs, output):
    pass


def _no_double_backward(ctx, *grads):
    raise RuntimeError("poolgpu.torch's gradients are not differentiable themselves (no double backward, "
                       "e.g. create_graph=True through a pooling); use torch.nn.functional's pooling there")


def define_family(family: str, parameters: str, plan: Callable[..., Plan], gradient: Callable[..., Plan],
                  exported: Callable[[str, bool], Callable], with_indices: bool = False, one_form: bool = False,
                  dims: tuple = (1, 2, 3)) -> None:
    """Register a family's operators (see the module's docstring).

    ``parameters``: the schema's arguments, ``device_key`` last; ``plan(function,
    *arguments, device=)`` checks a call and plans its results (``return_indices=`` too
    where ``with_indices``); ``gradient(function, grad_output, *arguments, device=)`` plans
    the input's gradient; ``exported(form, return_indices)``: the torch function of a form
    (e.g. ``max_pool2d``) that ONNX exports record, taking the operator's arguments but
    ``device_key``.  ``one_form``: one operator named ``family`` (``roi_pool``), not the
    forms of ``dims`` spatial dimensions (1d, 2d and 3d)."""
    if one_form:
        forms, function = [family], (lambda arguments: family)
    else:
        forms, function = [f"{family}{d}d" for d in dims], (lambda arguments: f"{family}{_dims(arguments)}d")
    _define(f"{family}_backward", function, f"(Tensor grad_output, {parameters}) -> Tensor", gradient,
            _nothing_saved, _no_double_backward)
    formula = _formula(f"{family}_backward")
    for form in forms:
        for name, indices in [(form, False)] + ([(f"{form}_with_indices", True)] if with_indices else []):
            planned = functools.partial(plan, return_indices=indices) if with_indices else plan
            returns = "(Tensor, Tensor)" if indices else "Tensor"
            _define(name, function, f"({parameters}) -> {returns}", planned, _setup_context, formula)
            OPERATORS[name] = Operator(form, planned, exported(form, indices))


def _calling(overload) -> Callable:
    def forward(*args):
        return overload(*args)

    return forward


def _dims(arguments: tuple) -> int:
    """The spatial dimensions of a call: the length of its first list (kernel or output size)."""
    return next(len(a) for a in arguments if isinstance(a, (list, tuple)))


def _fold(overload) -> Callable:
    """A vmap rule: the vmapped dimension becomes (part of) the batch dimension N; tensors
    not vmapped are repeated.  ``roi_pool``'s boxes name their image: their batch index
    moves with it.  Fractional pooling's samples (N, C, dims), one per plane, fold with the
    batch (an unbatched input's single N included)."""

    def rule(info, in_dims, *args):
        size = info.batch_size
        first = next(i for i, a in enumerate(args) if isinstance(a, torch.Tensor))
        roi = overload.name() in ("poolgpu::roi_pool", "poolgpu::roi_align", "poolgpu::ps_roi_align",
                                    "poolgpu::ps_roi_pool")
        samples = next((i for i in reversed(range(len(args))) if isinstance(args[i], torch.Tensor)), None) \
            if "fractional_max_pool" in overload.name() else None
        batched = args[first].dim() - (in_dims[first] is not None) == _dims(args) + 2
        element = [n for axis, n in enumerate(args[first].shape) if axis != in_dims[first]]
        planes_n = element[0] if batched else 1   # the samples of each vmapped call that its planes take
        images = None

        def fold(a, d, position):
            nonlocal images
            if not isinstance(a, torch.Tensor):
                return a
            a = a.movedim(d, 0) if d is not None else a.expand(size, *a.shape)
            if position == samples:
                return a[:, :planes_n].flatten(0, 1)
            if roi and a.dim() == 3:  # boxes (size, K, 5): image b's batch index n becomes b * N + n
                offsets = torch.arange(size, device=a.device, dtype=a.dtype)[:, None] * images
                a = torch.cat([a[..., :1] + offsets[..., None], a[..., 1:]], dim=-1)
            elif images is None:
                images = a.shape[1] if batched else 1
            return a.flatten(0, 1) if batched else a

        out = overload(*(fold(a, d, i) for i, (a, d) in enumerate(zip(args, in_dims))))

        def unfold(t):
            return t.unflatten(0, (size, -1)) if batched else t

        if isinstance(out, tuple):
            return tuple(unfold(t) for t in out), (0,) * len(out)
        return unfold(out), 0

    return rule
