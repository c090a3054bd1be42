"""``torch.nn``'s pooling modules on poolgpu: ``poolgpu.torch.nn.MaxPool2d`` and the rest,
and :func:`convert`, which puts them into a model in place of torch's (and :func:`unconvert`,
which puts torch's back).

Each module is a subclass of torch's (``isinstance(m, torch.nn.MaxPool2d)`` holds) with its
constructor arguments, defaults, attributes and ``repr``, and a keyword-only ``device=`` (a
pg.Device; also an attribute, settable); its ``forward`` calls the poolgpu.torch function.

``FractionalMaxPool2d`` and ``FractionalMaxPool3d`` draw their samples as torch's do (or
take the ``_random_samples`` buffer), so that a seeded model gives torch's results.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import logging
import textwrap
from typing import Any, Callable, Dict, Optional, Sequence

import torch

from ..device import Device
from . import adaptive, fractional, pooling, unpool
from .roi_modules import MultiScaleRoIAlign, PSRoIAlign, PSRoIPool, RoIAlign, RoIPool, torchvision_swaps
from .roi_modules import swapped as torchvision_replacement
from ._call import Input, Output, Result, checked_device
from ._forms import DEVICE, fields
from ._functional_mode import POOLINGS

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "FractionalMaxPool2d", "FractionalMaxPool3d", "convert", "unconvert"]
__all__ += ["RoIAlign", "RoIPool", "PSRoIAlign", "PSRoIPool", "MultiScaleRoIAlign"]


class _Pooling:
    """What every poolgpu pooling module adds to torch's: ``device``, and a ``forward`` that
    calls ``_function`` with the module's ``_arguments`` (attribute names, in the function's
    order)."""

    _function: Any
    _arguments: tuple

    def __init__(self, *args: Any, device: Optional[Device] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.device = device

    @property
    def device(self) -> Optional[Device]:
        """The pg.Device the module computes on; None: ``pg.default_device()`` (or a
        pg.Tensor input's device).  Results come back on the input's own torch device."""
        return self._poolgpu_device

    @device.setter
    def device(self, device: Optional[Device]) -> None:
        self._poolgpu_device = checked_device(device, type(self).__name__)

    def extra_repr(self) -> str:
        """torch's ``extra_repr``, and the device where one is set."""
        text = super().extra_repr()
        return text if self.device is None else f"{text}, device={self.device!r}"

    def __deepcopy__(self, memo: dict) -> "_Pooling":
        # a copy (e.g. of a whole model) shares the pg.Device: a GPU device is not copied
        if self.device is not None:
            memo[id(self.device)] = self.device
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        clone.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return clone


class _Pool(_Pooling):
    def forward(self, input: Input) -> Result:
        """The pooling of ``input``, as torch's module's (see the class).

        Parameters
        ----------
        input : torch.Tensor, numpy.ndarray or pg.Tensor
            As the poolgpu.torch function takes it.

        Returns
        -------
        output, or (output, indices) where the module returns indices
        """
        return self._function(input, *(getattr(self, name) for name in self._arguments), device=self.device)


class _Unpool(_Pooling):
    def forward(self, input: Input, indices: Input, output_size: Optional[Sequence[int]] = None) -> Output:
        """The unpooling of ``input`` at ``indices``, as torch's ``MaxUnpool``'s.

        Parameters
        ----------
        input : torch.Tensor, numpy.ndarray or pg.Tensor
            The pooled values.
        indices : torch.Tensor, numpy.ndarray or pg.Tensor
            Their int64 positions, as ``MaxPool`` returns them.
        output_size : tuple of int, optional
            The output's spatial size or whole shape; None: the default.

        Returns
        -------
        output
        """
        return self._function(input, indices, self.kernel_size, self.stride, self.padding, output_size,
                              device=self.device)


_MODULES: Dict[type, type] = {}  # torch's class -> poolgpu's


def _forms(name: str, base: type, function: str, arguments: Sequence[tuple], doc: str, module,
           dims_of: tuple = (1, 2, 3), **each: tuple) -> tuple:
    """``name`` 1d, 2d and 3d (the forms of ``dims_of``): subclasses of ``base`` and of torch's
    classes, calling ``module.<function>{d}d`` with ``arguments[d - 1]``; ``doc`` their
    docstring, with ``each``'s words (one per form)."""
    classes = []
    for dims in dims_of:
        torch_class = getattr(torch.nn, f"{name}{dims}d")
        signature = inspect.signature(torch_class)
        device = inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY, default=None,
                                   annotation=Optional[Device])
        # (torch leaves FractionalMaxPool's _random_samples unannotated: a tensor or None)
        parameters = [p.replace(annotation=Optional[Input]) if p.annotation is inspect.Parameter.empty else p
                      for p in signature.parameters.values()]
        cls = type(f"{name}{dims}d", (base, torch_class), {
            "__doc__": doc.format(name=f"{name}{dims}d", **fields(dims), **{k: v[dims - 1] for k, v in each.items()}),
            "__module__": __name__,
            "__signature__": signature.replace(parameters=[*parameters, device]),
            "_function": staticmethod(getattr(module, f"{function}{dims}d")),
            "_arguments": arguments[dims - 1],
        })
        _MODULES[torch_class] = cls
        classes.append(cls)
    return tuple(classes)


_SEE = "Pooling as ``torch.nn.{name}`` (same arguments, defaults, attributes and ``repr``), on poolgpu."
_INPUT = """
Takes and gives what :func:`poolgpu.torch.{function}` does: a torch.Tensor, a NumPy array or
a pg.Tensor, {shape}.

Parameters
----------
"""
_REST = """{device}
"""
_WINDOW = """kernel_size : int or tuple of int
    The window: {sizes}.
stride : int or tuple of int, optional
    The window's step; None (default): ``kernel_size``.
"""

MaxPool1d, MaxPool2d, MaxPool3d = _forms("MaxPool", _Pool, "max_pool", [(
    "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")] * 3,
    _SEE + _INPUT.replace("{function}", "max_pool{d}d") + _WINDOW + """padding : int or tuple of int, default 0
    Implicit -inf padding on both sides, at most half of ``kernel_size``.
dilation : int or tuple of int, default 1
    The spacing of the window's elements.
return_indices : bool, default False
    Also return the maxima's int64 positions (what ``MaxUnpool{d}d`` takes).
ceil_mode : bool, default False
    Round the output size up.
""" + _REST, pooling)

_DIVISOR = """
divisor_override : int, optional
    If given, every window's sum is divided by it (any int but 0)."""
_AVG = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")
AvgPool1d, AvgPool2d, AvgPool3d = _forms("AvgPool", _Pool, "avg_pool", [
    _AVG, _AVG + ("divisor_override",), _AVG + ("divisor_override",)],
    _SEE + _INPUT.replace("{function}", "avg_pool{d}d") + _WINDOW + """padding : int or tuple of int, default 0
    Implicit zero padding on both sides, at most half of ``kernel_size``.
ceil_mode : bool, default False
    Round the output size up.
count_include_pad : bool, default True
    Divide by the window clipped to the padded input; False: by the input elements covered.{divisor}
""" + _REST, pooling, divisor=("", _DIVISOR, _DIVISOR))

LPPool1d, LPPool2d, LPPool3d = _forms("LPPool", _Pool, "lp_pool", [
    ("norm_type", "kernel_size", "stride", "ceil_mode")] * 3,
    _SEE + _INPUT.replace("{function}", "lp_pool{d}d") + """norm_type : float
    ``p``, from 1 to 64, or ``math.inf``.
""" + _WINDOW + """ceil_mode : bool, default False
    Round the output size up.
""" + _REST, pooling)

AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d = _forms("AdaptiveMaxPool", _Pool, "adaptive_max_pool", [
    ("output_size", "return_indices")] * 3,
    _SEE + _INPUT.replace("{function}", "adaptive_max_pool{d}d") + """output_size : int or tuple of (int or None)
    The output's spatial size: {output_size}.
return_indices : bool, default False
    Also return the maxima's int64 positions.
""" + _REST, adaptive)

AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d = _forms("AdaptiveAvgPool", _Pool, "adaptive_avg_pool", [
    ("output_size",)] * 3,
    _SEE + _INPUT.replace("{function}", "adaptive_avg_pool{d}d") + """output_size : int or tuple of (int or None)
    The output's spatial size: {output_size}.
""" + _REST, adaptive)

MaxUnpool1d, MaxUnpool2d, MaxUnpool3d = _forms("MaxUnpool", _Unpool, "max_unpool", [()] * 3,
    _SEE + _INPUT.replace("{function}", "max_unpool{d}d") + """kernel_size : int or tuple of int
    The pooling's window.
stride : int or tuple of int, optional
    The pooling's step; None (default): ``kernel_size``.
padding : int or tuple of int, default 0
    The pooling's padding.
""" + _REST, unpool)

FractionalMaxPool2d, FractionalMaxPool3d = _forms("FractionalMaxPool", _Pool, "fractional_max_pool", [
    ("kernel_size", "output_size", "output_ratio", "return_indices", "_random_samples")] * 3,
    _SEE + _INPUT.replace("{function}", "fractional_max_pool{d}d") + """kernel_size : int or tuple of int
    The window: {sizes}.
output_size : int or tuple of int, optional
    The output's spatial size.
output_ratio : float or tuple of float, optional
    Instead of ``output_size``: the output's size as a ratio of the input's, in (0, 1).
return_indices : bool, default False
    Also return the maxima's int64 positions.
_random_samples : tensor, optional
    The samples (a buffer); None: drawn in every call as torch's module draws them.
""" + _REST, fractional, dims_of=(2, 3))


def convert(model: torch.nn.Module, device: Optional[Device] = None) -> torch.nn.Module:
    """Put poolgpu's pooling modules in place of torch's in ``model``: porting a model in one line.

    Every module of exactly one of torch's pooling classes (``torch.nn.MaxPool2d``, ...; not a
    subclass of one, whose ``forward`` may differ), or of torchvision's ROI modules
    (``RoIAlign``, ``RoIPool``, ``PSRoIAlign``, ``PSRoIPool``, ``MultiScaleRoIAlign``, where torchvision is
    imported), becomes poolgpu's, with the same attributes (and hooks); a poolgpu pooling
    module already there gets ``device`` where one is given.  What it swapped is logged
    (logger ``poolgpu.torch``, INFO), and what it left on torch as a warning: the
    subclasses, and the modules whose own methods call ``torch.nn.functional``'s pooling
    (e.g. ``F.avg_pool2d`` in ``forward``), which :func:`poolgpu.torch.functional` sends to
    poolgpu.  :func:`unconvert` undoes it.

    Parameters
    ----------
    model : torch.nn.Module
        Changed in place (its pooling children replaced).
    device : pg.Device, optional
        Where the modules compute; None: ``pg.default_device()``.

    Returns
    -------
    torch.nn.Module
        ``model``; where ``model`` itself is one of torch's pooling modules, its poolgpu
        replacement (a module cannot replace itself).

    Raises
    ------
    pg.ValidationError
        ``device`` is not a pg.Device.
    """
    device = checked_device(device, "convert")

    swaps = {**_MODULES, **torchvision_swaps()}

    def swap(module: torch.nn.Module) -> Optional[torch.nn.Module]:
        cls = swaps.get(type(module))
        if cls is not None and cls not in _MODULES.values():   # torchvision's ROI modules
            return torchvision_replacement(module, cls, device)
        if cls is None:
            if isinstance(module, (_Pooling, RoIAlign, RoIPool, PSRoIAlign, PSRoIPool, MultiScaleRoIAlign)) and device is not None:
                module.device = device
            return None
        new = cls.__new__(cls)
        new.__dict__.update(vars(module))
        new.device = device
        return new

    model, swapped = _swap(model, swap)
    if swapped:
        _LOG.info("convert: %d pooling modules now run on poolgpu: %s", len(swapped), _listed(swapped))
    count, left = _left_on_torch(model)
    if left:
        _LOG.warning("convert: %d poolings left on torch: %s (convert swaps torch.nn's pooling modules; run the model "
                     "inside poolgpu.torch.functional() to send torch.nn.functional's pooling calls to poolgpu)",
                     count, "; ".join(left))
    return model


def unconvert(model: torch.nn.Module) -> torch.nn.Module:
    """Put torch's pooling modules back in place of poolgpu's in ``model``: :func:`convert`
    undone.

    Every module of exactly one of poolgpu's pooling classes becomes torch's (its ROI
    modules torchvision's, where torchvision is imported), with the same attributes (and
    hooks) but ``device``; what it swapped is logged (logger ``poolgpu.torch``, INFO).

    Parameters
    ----------
    model : torch.nn.Module
        Changed in place (its pooling children replaced).

    Returns
    -------
    torch.nn.Module
        ``model``; where ``model`` itself is one of poolgpu's pooling modules, its torch
        replacement.
    """
    back = {**_TORCH_MODULES, **{ours: theirs for theirs, ours in torchvision_swaps().items()}}

    def swap(module: torch.nn.Module) -> Optional[torch.nn.Module]:
        cls = back.get(type(module))
        if cls is None:
            return None
        new = cls.__new__(cls)
        new.__dict__.update((k, v) for k, v in vars(module).items() if k != "_poolgpu_device")
        return new

    model, swapped = _swap(model, swap)
    if swapped:
        _LOG.info("unconvert: %d pooling modules back on torch: %s", len(swapped), _listed(swapped))
    return model


_LOG = logging.getLogger("poolgpu.torch")
_TORCH_MODULES = {ours: theirs for theirs, ours in _MODULES.items()}  # poolgpu's class -> torch's


def _swap(model: torch.nn.Module, swap: Callable) -> tuple:
    """Replace, in place, each module of ``model`` that ``swap`` gives a replacement for (one
    replacement for a module used twice): (``model``, or its own replacement; [(name, the
    replaced module)])."""
    replaced: Dict[int, Optional[torch.nn.Module]] = {}
    swapped = []
    order = {id(m): i for i, m in enumerate(model.modules())}

    def replacement(module: torch.nn.Module, name: str) -> Optional[torch.nn.Module]:
        if id(module) not in replaced:
            replaced[id(module)] = swap(module)
            if replaced[id(module)] is not None:
                swapped.append((name, module))
        return replaced[id(module)]

    top = replacement(model, "")
    if top is not None:
        return top, swapped
    for parent_name, parent in list(model.named_modules()):
        for name, child in list(parent.named_children()):
            new = replacement(child, f"{parent_name}.{name}" if parent_name else name)
            if new is not None:
                setattr(parent, name, new)
    return model, sorted(swapped, key=lambda s: order[id(s[1])])


def _listed(swapped: list) -> str:
    """``name (Class)`` of each swapped module (``(model)`` for the model itself)."""
    return ", ".join(f"{name or '(model)'} ({type(module).__name__})" for name, module in swapped)


def _left_on_torch(model: torch.nn.Module) -> tuple:
    """What of ``model`` pools on torch after convert: (how many poolings: modules and call
    sites, [a line for each subclass of a torch pooling class and each module whose
    class's own methods call torch.nn.functional's pooling functions])."""
    count, left = 0, []
    for name, module in model.named_modules():
        where = f"{name or '(model)'} ({type(module).__name__})"
        if isinstance(module, tuple(_MODULES)) and not isinstance(module, _Pooling):
            count += 1
            left.append(f"{where} is a subclass of torch.nn.{_torch_base(type(module)).__name__}")
        calls = _functional_calls(type(module))
        if calls:
            count += len(calls)
            left.append(f"{where} calls {', '.join(calls)}")
    return count, left


def _torch_base(cls: type) -> type:
    return next(c for c in cls.__mro__ if c in _MODULES)


@functools.lru_cache(maxsize=None)
def _functional_calls(cls: type) -> tuple:
    """The torch.nn.functional pooling calls written in ``cls``'s own methods and its bases'
    (not torch's or poolgpu's classes), as written (``F.avg_pool2d``), once per call site.
    Read from the source: names resolved in each method's module, so that ``F``,
    ``torch.nn.functional`` and a function imported by name all count."""
    calls = []
    for base in cls.__mro__:
        if base.__module__.split(".")[0] in ("torch", "poolgpu", "builtins"):
            continue
        for attribute in vars(base).values():
            function = getattr(attribute, "__func__", attribute)
            if not inspect.isfunction(function):
                continue
            try:
                tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
            except (OSError, TypeError, SyntaxError):  # no source (e.g. made by exec)
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and _is_pooling(_resolved(node.func, function.__globals__)):
                    calls.append(ast.unparse(node.func))
    return tuple(calls)


def _resolved(expression: ast.expr, names: dict) -> Any:
    """The object a name or attribute chain (``F.max_pool2d``) denotes in a module's globals;
    None where it is anything else (``self.pool``, a call's result, a missing name)."""
    if isinstance(expression, ast.Name):
        return names.get(expression.id)
    if isinstance(expression, ast.Attribute):
        owner = _resolved(expression.value, names)
        try:
            return None if owner is None else getattr(owner, expression.attr, None)
        except Exception:  # (a property of some global that fails when read: not a pooling)
            return None
    return None


def _is_pooling(function: Any) -> bool:
    try:
        return function in POOLINGS
    except TypeError:  # (unhashable)
        return False
